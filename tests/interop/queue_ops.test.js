// queue_ops.test.js - queue administration done by Node BullMQ 6.7.0 and by ferry on the same
// state gives the same Redis keys: a queue is filled by Node (a real Node Worker fails and
// completes its jobs, a flow child records its failure in its parent), copied key by key to a
// twin queue, then Node runs the operation on one (Job.retry, Queue.retryJobs, Job.promote,
// Queue.promoteJobs, Queue.clean, Queue.drain) and the ferry CLI on the other (job retry,
// queue retry, job promote, queue promote, queue clean, queue drain). Every key of the two
// queues must then be equal (the twin's name substituted, stream entries compared without
// their ids), and Node's getters must read ferry's result as they read their own. `ferry job
// list` must return the pages Node's Queue.getJobs returns, and `ferry queue list` the queues
// Node made with the counts Node reports, and `ferry job logs` the lines Node's job.log wrote
// as Queue.getJobLogs returns them; `ferry queue workers` the workers Queue.getWorkers() lists.
'use strict';
const assert = require('node:assert');
const { FlowProducer, Job } = require('bullmq');
const h = require('./lib/harness');

const suite = new h.Suite('queue_ops: retry / promote / clean / drain / list by ferry equal Node BullMQ on the same state');
const redis = h.newRedis();
suite.onCleanup(() => redis.quit());

async function scanKeys(pattern) {
  const out = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out.sort();
}

const base = (name) => `${h.PREFIX}:${name}:`;

// Copy every key of queue `from` to queue `to` (which must have none), writing `to`'s name
// wherever `from`'s appears in the content (flow keys and opts name the queue), keeping
// scores, stream ids and expiries.
async function copyQueue(from, to) {
  const src = `${h.PREFIX}:${from}`;
  const dst = `${h.PREFIX}:${to}`;
  const re = (v) => v.split(src).join(dst);
  for (const k of await scanKeys(`${base(from)}*`)) {
    const nk = re(k);
    const type = await redis.type(k);
    if (type === 'string') await redis.set(nk, re(await redis.get(k)));
    else if (type === 'hash') {
      const o = await redis.hgetall(k);
      await redis.hset(nk, ...Object.entries(o).flatMap(([f, v]) => [re(f), re(v)]));
    } else if (type === 'list') await redis.rpush(nk, ...(await redis.lrange(k, 0, -1)).map(re));
    else if (type === 'set') await redis.sadd(nk, ...(await redis.smembers(k)).map(re));
    else if (type === 'zset') {
      const z = await redis.zrange(k, 0, -1, 'WITHSCORES');
      const args = [];
      for (let i = 0; i < z.length; i += 2) args.push(z[i + 1], re(z[i]));
      await redis.zadd(nk, ...args);
    } else if (type === 'stream') {
      for (const [id, fields] of await redis.xrange(k, '-', '+')) await redis.xadd(nk, id, ...fields.map(re));
    } else throw new Error(`copyQueue: ${k} is a ${type}`);
    const ttl = await redis.pttl(k);
    if (ttl > 0) await redis.pexpire(nk, ttl);
  }
}

// Every key of a queue as {suffix: content}, with the queue's own name written as QUEUE
// (flow keys name it), stream entries without their ids (the time they were written). The
// events present when the twin was made are dropped: `skipEvents` of them.
async function snapshot(name, skipEvents = 0) {
  const b = base(name);
  const norm = (v) => v.split(`${h.PREFIX}:${name}`).join('<Q>');
  const snap = {};
  for (const k of await scanKeys(`${b}*`)) {
    const type = await redis.type(k);
    let v;
    if (type === 'string') v = norm(await redis.get(k));
    else if (type === 'hash') {
      const o = await redis.hgetall(k);
      v = Object.fromEntries(Object.keys(o).sort().map((f) => [norm(f), norm(o[f])]));
    } else if (type === 'list') v = (await redis.lrange(k, 0, -1)).map(norm);
    else if (type === 'set') v = (await redis.smembers(k)).map(norm).sort();
    else if (type === 'zset') v = await redis.zrange(k, 0, -1, 'WITHSCORES');
    else if (type === 'stream') v = (await redis.xrange(k, '-', '+')).slice(skipEvents).map((e) => e[1].map(norm).join(' '));
    else v = `?${type}`;
    snap[norm(k)] = { type, v };
  }
  return snap;
}

async function eventCount(name) {
  return redis.xlen(`${base(name)}events`);
}

// A queue filled by Node: failed jobs (one lifo, one with a priority, one with attempts left
// over: attempts 2), completed jobs (one with a priority), delayed jobs (one with a priority),
// a flow whose child failed with ignoreDependencyOnFailure (so its parent recorded the
// failure in `<parent>:failed` and completed), and a waiting job.
async function fill(nq) {
  const q = nq.queue;
  await q.add('bad', { n: 1 }, { attempts: 2 });
  await q.add('bad', { n: 2 }, { lifo: true });
  await q.add('bad', { n: 3 }, { priority: 7 });
  await q.add('ok', { n: 4 });
  await q.add('ok', { n: 5 }, { priority: 3 });
  const flow = new FlowProducer({ connection: h.connection });
  try {
    await flow.add({
      name: 'parent', queueName: nq.name, data: {}, opts: { jobId: 'fparent' },
      children: [{ name: 'bad', queueName: nq.name, data: { child: 1 }, opts: { jobId: 'fchild', ignoreDependencyOnFailure: true } }],
    });
  } finally {
    await flow.close();
  }
  const w = h.startNodeWorker(nq.name, async (job) => {
    if (job.name === 'bad') throw new Error(`bad ${job.id}`);
    return { ok: job.id };
  });
  await h.waitFor(async () => {
    const c = await q.getJobCounts('completed', 'failed', 'waiting', 'prioritized', 'active', 'waiting-children');
    return c.failed === 4 && c.completed === 3 && c.waiting + c.prioritized + c.active + c['waiting-children'] === 0;
  }, { what: 'Node worker: 4 failed, 3 completed' });
  await w.close();
  await q.add('later', {}, { delay: 600000 });
  await q.add('later', {}, { delay: 900000, priority: 4 });
  await q.add('later', {}, { delay: 300000 });
  await q.add('waiting', {});
}

// More for clean and drain: jobs two hours old in wait, prioritized and delayed (two of them
// started recently), one failed
// and one completed job that finished two hours ago, a flow whose parent waits for two
// children still in wait, a deduplicated job, and a job scheduler whose first iteration is
// delayed (none in wait: Node's drain mishandles those, see docs/queue.md).
async function fillMore(nq) {
  const q = nq.queue;
  const old = Date.now() - 2 * 3600000;
  await q.add('old', {}, { timestamp: old });
  await q.add('oldp', {}, { timestamp: old, priority: 5 });
  await q.add('oldd', {}, { timestamp: old, delay: 600000 });
  // old but started recently (a stalled job put back, a delayed retry): their processedOn
  // counts, so a grace of an hour keeps them
  const ran = [await q.add('oldran', {}, { timestamp: old }), await q.add('olddran', {}, { timestamp: old, delay: 600000 })];
  for (const j of ran) await redis.hset(`${base(nq.name)}${j.id}`, 'processedOn', Date.now());
  await q.add('freshp', {}, { priority: 6 });
  await q.add('dd', {}, { deduplication: { id: 'dd1' } });
  const flow = new FlowProducer({ connection: h.connection });
  try {
    await flow.add({
      name: 'wparent', queueName: nq.name, data: {}, opts: { jobId: 'wparent' },
      children: [
        { name: 'c', queueName: nq.name, data: {}, opts: { jobId: 'wchild1' } },
        { name: 'c', queueName: nq.name, data: {}, opts: { jobId: 'wchild2' } },
      ],
    });
  } finally {
    await flow.close();
  }
  await q.upsertJobScheduler('tick', { every: 3600000, startDate: Date.now() + 600000 }, { name: 'tick' });
  const b = base(nq.name);
  for (const [set, n] of [['failed', 1], ['completed', 4]]) {
    const job = (await q.getJobs([set])).find((j) => j.data.n === n);
    await redis.zadd(`${b}${set}`, 'XX', old, job.id);
    await redis.hset(`${b}${job.id}`, 'finishedOn', old);
  }
}

// Node's queue and its twin (a Node Queue on it too, to read it with Node's getters), with
// identical content.
async function twins(tag, { paused = false, extra = false } = {}) {
  const a = await h.nodeQueue(suite, h.uniqueQueue(`${tag}-n`));
  await fill(a);
  if (extra) await fillMore(a);
  if (paused) await a.queue.pause();
  const b = await h.nodeQueue(suite, h.uniqueQueue(`${tag}-f`));
  await h.deleteQueueKeys(redis, b.name); // the Queue constructor wrote its meta
  await copyQueue(a.name, b.name);
  const events = await eventCount(a.name);
  assert.deepStrictEqual(await snapshot(b.name), await snapshot(a.name), 'the twin is an exact copy');
  return { a, b, events };
}

async function sameKeys(t, what) {
  const na = await snapshot(t.a.name, t.events);
  const nb = await snapshot(t.b.name, t.events);
  assert.deepStrictEqual(nb, na, `${what}: ferry's keys equal Node's`);
}

async function idsOf(q, ...states) {
  return Object.fromEntries(await Promise.all(states.map(async (s) => [s, (await q.getJobs([s])).map((j) => j.id)])));
}

suite.check('job retry (failed, completed, lifo, priority, flow child, reset attempts) equals Job.retry', async () => {
  const t = await twins('jretry');
  const failed = await t.a.queue.getFailed();
  const byData = (n) => failed.find((j) => j.data.n === n).id;
  const ops = [
    { id: byData(1), state: 'failed', opts: {} },
    { id: byData(2), state: 'failed', opts: {} },
    { id: byData(3), state: 'failed', opts: { resetAttemptsMade: true, resetAttemptsStarted: true }, args: ['--reset-attempts', '--reset-attempts-started'] },
    { id: 'fchild', state: 'failed', opts: {} },
    { id: (await t.a.queue.getCompleted()).find((j) => j.data.n === 5).id, state: 'completed', opts: {} },
    { id: (await t.a.queue.getCompleted()).find((j) => j.data.n === 4).id, state: 'completed', opts: { resetAttemptsMade: true }, args: ['--reset-attempts', '--state', 'completed'] },
  ];
  for (const op of ops) {
    await (await Job.fromId(t.a.queue, op.id)).retry(op.state, op.opts);
    const out = await h.ferryOk(['job', 'retry', t.b.name, op.id, ...(op.args || [])]);
    assert.strictEqual(out, `job ${op.id}: retried (was ${op.state})\n`);
  }
  await sameKeys(t, 'after the retries');
  // Node reads ferry's result as its own
  for (const op of ops) {
    const ja = await Job.fromId(t.a.queue, op.id);
    const jb = await Job.fromId(t.b.queue, op.id);
    assert.strictEqual(await jb.getState(), await ja.getState(), `state of ${op.id}`);
    for (const f of ['attemptsMade', 'attemptsStarted', 'failedReason', 'returnvalue', 'finishedOn', 'processedOn', 'stacktrace']) {
      assert.deepStrictEqual(jb[f], ja[f], `${op.id}.${f}`);
    }
  }
  assert.strictEqual(await (await Job.fromId(t.b.queue, byData(2))).getState(), 'waiting');
  assert.strictEqual(await (await Job.fromId(t.b.queue, byData(3))).getState(), 'prioritized');
  assert.deepStrictEqual(await redis.smembers(`${base(t.b.name)}fparent:dependencies`), [`${base(t.b.name)}fchild`],
    'the flow child is its parent\'s pending dependency again');

  // refusals: Node throws, ferry exits 1 naming the problem, nothing changes on either side
  const before = await snapshot(t.b.name);
  await assert.rejects((await Job.fromId(t.a.queue, byData(1))).retry('failed'), /not in the failed state/);
  const again = await h.ferry(['job', 'retry', t.b.name, byData(1)]);
  assert.strictEqual(again.code, 1, again.stderr);
  assert.match(again.stderr, new RegExp(`job ${byData(1)} of queue ${t.b.name} is not failed or completed`));
  const missing = await h.ferry(['job', 'retry', t.b.name, 'no-such-job']);
  assert.strictEqual(missing.code, 1);
  assert.match(missing.stderr, /job no-such-job not found in queue/);
  const usage = await h.ferry(['job', 'retry', t.b.name, byData(1), '--state', 'delayed']);
  assert.strictEqual(usage.code, 2);
  assert.match(usage.stderr, /--state: expected failed or completed, got 'delayed'/);
  assert.deepStrictEqual(await snapshot(t.b.name), before, 'refused retries change nothing');
});

suite.check('queue retry equals Queue.retryJobs, failed and completed, on a running and a paused queue', async () => {
  for (const paused of [false, true]) {
    const t = await twins(paused ? 'qretry-p' : 'qretry', { paused });
    await t.a.queue.retryJobs({ state: 'failed' });
    const out = await h.ferryOk(['queue', 'retry', t.b.name]);
    assert.strictEqual(out, `queue ${t.b.name}: 4 failed jobs retried\n`);
    await sameKeys(t, `retry failed${paused ? ' (paused)' : ''}`);
    await t.a.queue.retryJobs({ state: 'completed' });
    const json = JSON.parse(await h.ferryOk(['queue', 'retry', t.b.name, '--state', 'completed', '--json']));
    assert.deepStrictEqual(json, { retried: 3 });
    await sameKeys(t, `retry completed${paused ? ' (paused)' : ''}`);
    assert.deepStrictEqual(await idsOf(t.b.queue, 'wait', 'failed', 'completed', 'prioritized'),
      await idsOf(t.a.queue, 'wait', 'failed', 'completed', 'prioritized'));
    assert.strictEqual(await redis.exists(`${base(t.b.name)}marker`), paused ? 0 : 1);
    // nothing left: 0, and nothing written
    const empty = await h.ferryOk(['queue', 'retry', t.b.name]);
    assert.strictEqual(empty, `queue ${t.b.name}: 0 failed jobs retried\n`);
    await sameKeys(t, 'an empty retry');
  }
});

suite.check('job promote equals Job.promote; queue promote equals Queue.promoteJobs', async () => {
  const t = await twins('promote');
  const delayed = await t.a.queue.getDelayed();
  const prio = delayed.find((j) => j.opts.priority === 4).id;
  const plain = delayed.find((j) => j.opts.delay === 600000).id;
  for (const id of [prio, plain]) {
    await (await Job.fromId(t.a.queue, id)).promote();
    assert.strictEqual(await h.ferryOk(['job', 'promote', t.b.name, id]), '');
  }
  await sameKeys(t, 'after job promote');
  assert.strictEqual(await (await Job.fromId(t.b.queue, prio)).getState(), 'prioritized');
  assert.strictEqual((await Job.fromId(t.b.queue, plain)).delay, 0);
  const notDelayed = await h.ferry(['job', 'promote', t.b.name, plain]);
  assert.strictEqual(notDelayed.code, 1);
  assert.match(notDelayed.stderr, /is not delayed/);
  await assert.rejects((await Job.fromId(t.a.queue, plain)).promote(), /not in the delayed state/);

  // the last delayed job and one more with a priority (added by Node to both, with a fixed
  // timestamp so that the two adds write the same), to see the order and the kept `delay`
  const more = ['more', {}, { delay: 700000, priority: 2, jobId: 'm1', timestamp: 1795978582232 }];
  await t.a.queue.add(...more);
  await t.b.queue.add(...more);
  await t.a.queue.promoteJobs();
  const out = JSON.parse(await h.ferryOk(['queue', 'promote', t.b.name, '--json']));
  assert.deepStrictEqual(out, { promoted: 2 });
  await sameKeys(t, 'after queue promote');
  assert.strictEqual(await redis.hget(`${base(t.b.name)}m1`, 'delay'), '700000', 'BullMQ keeps delay on bulk promotion');
  assert.strictEqual(await (await Job.fromId(t.b.queue, 'm1')).getState(), 'waiting');
  assert.strictEqual((await h.ferryOk(['queue', 'promote', t.b.name])), `queue ${t.b.name}: 0 delayed jobs promoted\n`);
});

suite.check('a Node Worker runs the jobs ferry retried and promoted', async () => {
  const t = await twins('run');
  await h.ferryOk(['queue', 'retry', t.b.name]);
  await h.ferryOk(['queue', 'promote', t.b.name]);
  const seen = [];
  const w = h.startNodeWorker(t.b.name, async (job) => {
    seen.push(job.id);
    return 'again';
  });
  await h.waitFor(async () => (await t.b.queue.getJobCounts('completed')).completed === 3 + 4 + 3 + 1,
    { what: 'every retried, promoted and waiting job completed' });
  await w.close();
  assert.strictEqual(seen.length, 4 + 3 + 1);
  const child = await Job.fromId(t.b.queue, 'fchild');
  assert.strictEqual(child.returnvalue, 'again');
  assert.strictEqual(child.attemptsMade, 2, 'attemptsMade kept by the retry, +1 by the run');
});

suite.check('queue clean equals Queue.clean in every state (grace, limit, flows, dedup, schedulers)', async () => {
  const t = await twins('clean', { extra: true });
  const steps = [
    ['completed', 3600000, 0], ['failed', 3600000, 0], ['wait', 3600000, 0], ['prioritized', 3600000, 0],
    ['delayed', 3600000, 0], ['delayed', 0, 1], ['wait', 0, 2], ['wait', 0, 0], ['paused', 0, 0],
    ['prioritized', 0, 0], ['delayed', 0, 0], ['completed', 0, 0], ['failed', 0, 0],
  ];
  for (const [state, grace, limit] of steps) {
    const nodeIds = await t.a.queue.clean(grace, limit, state);
    const args = ['queue', 'clean', t.b.name, '--state', state, '--grace', `${grace}ms`, '--json'];
    if (limit) args.push('--limit', String(limit));
    const out = JSON.parse(await h.ferryOk(args));
    assert.deepStrictEqual(out.ids, nodeIds, `clean ${state} grace ${grace} limit ${limit}: the same ids`);
    assert.strictEqual(out.count, nodeIds.length);
    await sameKeys(t, `after clean ${state} grace ${grace} limit ${limit}`);
  }
  // what is left, as Node sees it: the active-free queue holds only the scheduler's iteration
  const c = await t.b.queue.getJobCounts('waiting', 'prioritized', 'delayed', 'completed', 'failed', 'waiting-children');
  assert.deepStrictEqual(c, { waiting: 0, prioritized: 0, delayed: 1, completed: 0, failed: 0, 'waiting-children': 0 });
  assert.strictEqual(await redis.exists(`${base(t.b.name)}de:dd1`), 0, 'the dedup key went with its job');
  assert.strictEqual(await redis.exists(`${base(t.b.name)}wparent`), 0, 'the parent went with its last child');
  const text = await h.ferryOk(['queue', 'clean', t.b.name, '--state', 'waiting', '--grace', '1h']);
  assert.strictEqual(text, `queue ${t.b.name}: 0 waiting jobs deleted\n`);
  const bad = await h.ferry(['queue', 'clean', t.b.name, '--state', 'active', '--grace', '1h']);
  assert.strictEqual(bad.code, 2);
  assert.match(bad.stderr, /--state: expected completed, failed, delayed, wait, paused or prioritized, got 'active'/);
});

suite.check('queue drain equals Queue.drain, with and without delayed', async () => {
  for (const delayed of [false, true]) {
    const t = await twins(delayed ? 'drain-d' : 'drain', { extra: true });
    const before = await t.b.queue.getJobCounts('waiting', 'prioritized', 'delayed');
    await t.a.queue.drain(delayed);
    const args = ['queue', 'drain', t.b.name, '--json'];
    if (delayed) args.push('--delayed');
    const out = JSON.parse(await h.ferryOk(args));
    await sameKeys(t, `after drain(${delayed})`);
    // the deleted jobs, and the parent deleted with its last child
    const gone = before.waiting + before.prioritized + (delayed ? before.delayed - 1 : 0);
    assert.deepStrictEqual(out, { deleted: gone });
    const c = await t.b.queue.getJobCounts('waiting', 'prioritized', 'delayed', 'waiting-children');
    assert.deepStrictEqual(c, { waiting: 0, prioritized: 0, delayed: delayed ? 1 : before.delayed, 'waiting-children': 0 });
    assert.strictEqual((await t.b.queue.getJobSchedulers()).length, 1);
  }
});

suite.check('job list pages every state as Queue.getJobs does (order, asc, ranges, ids without a job)', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('list'));
  await fill(nq);
  await fillMore(nq);
  for (let i = 0; i < 5; i++) await nq.queue.add(i % 2 ? 'odd' : 'even', { i });
  // an id whose hash is gone, at the head of wait: skipped, the page filled from behind it
  await redis.lpush(`${base(nq.name)}wait`, 'ghost-1');
  const pages = [
    ['wait', 0, 2, false], ['waiting', 0, 2, true], ['wait', 1, 4, false], ['wait', 3, 20, true],
    ['failed', 0, 99, false], ['failed', 1, 2, true], ['completed', 0, 99, true],
    ['delayed', 0, 99, false], ['delayed', 0, 1, true], ['prioritized', 0, 99, false],
    ['waiting-children', 0, 99, false], ['paused', 0, 99, false], ['active', 0, 99, false],
  ];
  for (const [state, start, end, asc] of pages) {
    const node = await nq.queue.getJobs([state], start, end, asc);
    const args = ['job', 'list', nq.name, '--state', state, '--start', String(start), '--end', String(end), '--json'];
    if (asc) args.push('--asc');
    const out = (await h.ferryOk(args)).split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const what = `${state} ${start}..${end}${asc ? ' asc' : ''}`;
    assert.deepStrictEqual(out.map((j) => j.id), node.map((j) => j.id), `${what}: the same ids in the same order`);
    for (let i = 0; i < node.length; i++) {
      for (const f of ['name', 'data', 'attemptsMade', 'failedReason', 'timestamp', 'finishedOn']) {
        assert.deepStrictEqual(out[i][f] ?? undefined, node[i][f] ?? undefined, `${what}: job ${node[i].id}.${f}`);
      }
    }
  }
  // --name filters the page; the default page is 100 positions, newest first
  const odd = (await h.ferryOk(['job', 'list', nq.name, '--state', 'wait', '--name', 'odd', '--json'])).trim().split('\n').map((l) => JSON.parse(l).id);
  const nodeOdd = (await nq.queue.getJobs(['wait'], 0, 99)).filter((j) => j.name === 'odd').map((j) => j.id);
  assert.deepStrictEqual(odd, nodeOdd);
  assert.strictEqual(odd.length, 2);
  const text = await h.ferryOk(['job', 'list', nq.name, '--state', 'failed', '--limit', '1']);
  const newest = (await nq.queue.getJobs(['failed'], 0, 0))[0];
  assert.match(text, new RegExp(`^${newest.id}  bad  attempts ${newest.attemptsMade}  added \\d{4}-\\d\\d-\\d\\dT[0-9:]{8}Z  reason: ${newest.failedReason}\n$`));
  const bad = await h.ferry(['job', 'list', nq.name, '--state', 'done']);
  assert.strictEqual(bad.code, 2);
  assert.match(bad.stderr, /--state: expected wait, active/);
});

suite.check('queue list finds the queues Node made under a prefix, with the counts Node reports', async () => {
  const { Queue } = require('bullmq');
  const prefix = `ix-ql-${process.pid}-{t}`;
  const made = [];
  try {
    for (const name of ['alpha', 'beta', 'gamma']) {
      const q = new Queue(name, { connection: h.connection, prefix });
      made.push(q);
      await q.waitUntilReady();
    }
    await made[0].add('a', {});
    await made[0].add('b', {}, { priority: 3 });
    await made[1].add('c', {}, { delay: 600000 });
    await made[1].pause();
    const out = JSON.parse(await h.ferryOk(['queue', 'list', '--prefix', prefix, '--json']));
    assert.strictEqual(out.prefix, prefix);
    assert.strictEqual(out.complete, true);
    assert.deepStrictEqual(out.queues.map((q) => q.name), ['alpha', 'beta', 'gamma']);
    const types = ['waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized', 'waiting-children'];
    for (let i = 0; i < made.length; i++) {
      const node = await made[i].getJobCounts(...types);
      const mine = Object.fromEntries(types.map((t) => [t, out.queues[i][t]]));
      assert.deepStrictEqual(mine, node, `counts of ${made[i].name}`);
      assert.strictEqual(out.queues[i].isPaused, await made[i].isPaused());
    }
  } finally {
    for (const q of made) {
      await q.obliterate({ force: true });
      await q.close();
    }
  }
});

suite.check('job logs reads what Node\'s job.log wrote, as Queue.getJobLogs returns it', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('logs'));
  const kept = await nq.queue.add('k', {}, { keepLogs: 3 });
  const all = await nq.queue.add('a', {});
  for (const line of ['one', 'twö ✓', 'multi\nline', 'tab\there', '{"json":true}']) {
    await kept.log(line);
    await all.log(line);
  }
  const combos = [[0, -1, true], [0, -1, false], [1, 2, true], [0, 1, false], [3, 10, true], [9, 12, false]];
  for (const job of [kept, all]) {
    for (const [start, end, asc] of combos) {
      const node = await nq.queue.getJobLogs(job.id, start, end, asc);
      const args = ['job', 'logs', nq.name, job.id, '--start', String(start), '--json'];
      if (end >= 0) args.push('--end', String(end));
      if (!asc) args.push('--desc');
      const mine = JSON.parse(await h.ferryOk(args));
      assert.deepStrictEqual(mine, node, `job ${job.id} logs ${start}..${end} asc ${asc}`);
    }
  }
  assert.strictEqual((await nq.queue.getJobLogs(kept.id)).count, 3, 'Node trimmed to keepLogs');
  const text = await h.ferryOk(['job', 'logs', nq.name, all.id, '--limit', '3']);
  assert.strictEqual(text, 'one\ntwö ✓\nmulti\\nline\n');
});

suite.check('queue workers lists the Node and ferry workers Queue.getWorkers() lists', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('workers'));
  const other = await h.nodeQueue(suite, `${nq.name}x`);
  h.startNodeWorker(nq.name, async () => 1, { name: 'nw' });
  h.startNodeWorker(nq.name, async () => 1);
  h.startNodeWorker(other.name, async () => 1, { name: 'elsewhere' });
  const fw = h.startFerryWorker(nq.name, { name: 'fw' });
  const rawnames = (list) => list.map((w) => w.rawname).sort();
  await h.waitFor(async () => (await nq.queue.getWorkers()).length === 3, { what: 'three workers in getWorkers()' });
  const node = await nq.queue.getWorkers();
  const out = JSON.parse(await h.ferryOk(['queue', 'workers', nq.name, '--json']));
  assert.deepStrictEqual(rawnames(out.workers), rawnames(node));
  assert.deepStrictEqual(out.workers.map((w) => w.id).sort(), node.map((w) => w.id).sort());
  assert.deepStrictEqual(out.workers.map((w) => w.workerName).sort(), ['fw', 'nw', null].sort());
  for (const w of out.workers) assert.strictEqual(w.name, nq.name);
  const text = await h.ferryOk(['queue', 'workers', nq.name]);
  assert.strictEqual(text.split('\n').filter(Boolean).length, 3);
  assert.match(text, /^fw  id \d+  addr [0-9.:]+  age \d+ s  idle \d+ s$/m);
  await fw.stop();
  await h.waitFor(async () => JSON.parse(await h.ferryOk(['queue', 'workers', nq.name, '--json'])).workers.length === 2,
    { what: 'the stopped ferry worker gone from the list' });
});

suite.run();
