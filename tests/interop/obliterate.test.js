// obliterate.test.js - deleting a whole queue across implementations: `ferry queue obliterate`
// on a queue Node BullMQ 6.7.0 filled (every state, a flow, a deduplicated job, job logs,
// metrics, a job scheduler from upsertJobScheduler, a rate limit) leaves no key of it and does
// not touch a sibling queue whose name starts the same; Node's queue.obliterate() on a queue
// ferry filled leaves no key (ferry writes nothing Node does not know); a job active in a Node
// Worker makes ferry refuse without --force, leaving the queue as it was, and --force deletes it.
'use strict';
const assert = require('node:assert');
const { FlowProducer } = require('bullmq');
const h = require('./lib/harness');

const suite = new h.Suite('obliterate: ferry <-> Node whole-queue deletion');
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

const queueKeys = (name) => scanKeys(`${h.PREFIX}:${name}:*`);

// key -> DUMP (hex) of every key of a queue: equal snapshots mean nothing was changed.
async function snapshot(name) {
  const snap = {};
  for (const k of await queueKeys(name)) snap[k] = (await redis.dumpBuffer(k)).toString('hex');
  return snap;
}

// A queue in every state, written by Node BullMQ only.
async function fillWithNode(nq) {
  const q = nq.queue;
  await q.add('ok', { n: 1 });
  await q.add('bad', { n: 2 });
  const w = h.startNodeWorker(nq.name, async (job) => {
    if (job.name === 'bad') throw new Error('bad job');
    return { done: job.id };
  }, { metrics: { maxDataPoints: 10 } });
  await h.waitFor(async () => {
    const c = await q.getJobCounts('completed', 'failed');
    return c.completed === 1 && c.failed === 1;
  }, { what: '1 completed + 1 failed' });
  await w.close();
  const logged = await q.add('w', { n: 3 });
  await logged.log('a log line');
  await q.add('w', { n: 4 }, { lifo: true });
  await q.add('d', {}, { delay: 600000 });
  await q.add('p', {}, { priority: 5 });
  await q.add('dd', {}, { deduplication: { id: 'dedup-1' } });
  const flow = new FlowProducer({ connection: h.connection });
  try {
    await flow.add({ name: 'parent', queueName: nq.name, data: {}, children: [{ name: 'child', queueName: nq.name, data: {} }] });
  } finally {
    await flow.close();
  }
  await q.upsertJobScheduler('tick', { every: 3600000 }, { name: 'tick', data: { s: 1 } });
  await q.rateLimit(600000);
  await q.pause();
  await q.add('while-paused', {});
  // the shape we meant, as Node sees it
  const c = await q.getJobCounts('waiting', 'completed', 'failed', 'delayed', 'prioritized', 'waiting-children');
  assert.strictEqual(c.completed, 1);
  assert.strictEqual(c.failed, 1);
  assert.strictEqual(c.prioritized, 1);
  assert.strictEqual(c['waiting-children'], 1);
  assert.ok(c.delayed >= 1 && c.waiting >= 5, JSON.stringify(c));
  const base = `${h.PREFIX}:${nq.name}:`;
  for (const k of ['de:dedup-1', 'repeat:tick', 'limiter', 'metrics:completed', `${logged.id}:logs`, 'stalled-check']) {
    assert.strictEqual(await redis.exists(base + k), 1, `Node wrote ${k}`);
  }
}

function countPrinted(stdout, name) {
  const m = new RegExp(`^queue ${name}: obliterated, (\\d+) keys? deleted\\n$`).exec(stdout);
  assert.ok(m, `ferry printed ${JSON.stringify(stdout)}`);
  return Number(m[1]);
}

suite.check('ferry queue obliterate deletes every key of a queue Node filled; a sibling queue is untouched', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('obl-n'));
  const sib = await h.nodeQueue(suite, `${nq.name}x`); // its keys match `${nq.name}*` too
  await fillWithNode(nq);
  await fillWithNode(sib);
  const before = await queueKeys(nq.name);
  const sibBefore = await snapshot(sib.name);
  assert.ok(Object.keys(sibBefore).length > 20);

  const refused = await h.ferry(['queue', 'obliterate', nq.name]);
  assert.strictEqual(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, /add --yes/);
  assert.deepStrictEqual(await queueKeys(nq.name), before, 'without --yes nothing is deleted');

  const out = await h.ferryOk(['queue', 'obliterate', nq.name, '--yes']);
  assert.strictEqual(countPrinted(out, nq.name), before.length, 'the count is the number of keys the queue had');
  assert.deepStrictEqual(await queueKeys(nq.name), [], 'no key of the queue is left');
  assert.deepStrictEqual(await snapshot(sib.name), sibBefore, 'the sibling queue is unchanged');
});

suite.check("Node's queue.obliterate() deletes every key of a queue ferry filled", async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('obl-f'));
  await h.ferryAdd(nq.name, 'ok', { n: 1 });
  await h.ferryAdd(nq.name, 'bad', { n: 2 });
  const fw = h.startFerryWorker(nq.name, { behave: { bad: { exit: 65 } } });
  await h.waitFor(async () => {
    const c = await h.ferryCounts(nq.name);
    return c.completed === 1 && c.failed === 1;
  }, { what: 'ferry worker: 1 completed + 1 failed' });
  await fw.stop();
  await h.ferryAdd(nq.name, 'w', {});
  await h.ferryAdd(nq.name, 'w', {}, { opts: { lifo: true } });
  await h.ferryAdd(nq.name, 'd', {}, { opts: { delay: 600000 } });
  await h.ferryAdd(nq.name, 'p', {}, { opts: { priority: 4 } });
  await h.ferryAdd(nq.name, 'c', {}, { jobId: 'custom-id' });
  await h.ferryOk(['scheduler', 'upsert', nq.name, 'tick', '--every', '3600000']);
  await h.ferryOk(['queue', 'concurrency', nq.name, '3']);
  await h.ferryOk(['queue', 'pause', nq.name]);
  await h.ferryAdd(nq.name, 'while-paused', {});
  const before = await queueKeys(nq.name);
  assert.ok(before.length >= 12, before.join(' '));

  await nq.queue.obliterate();
  assert.deepStrictEqual(await queueKeys(nq.name), [], 'no key of the queue is left');
});

suite.check('a job active in a Node Worker: ferry refuses without --force and changes nothing; --force deletes it all', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('obl-a'));
  let release;
  const held = new Promise((r) => (release = r));
  const job = await nq.queue.add('hold', {});
  // no lock renewal or stalled check while the test compares snapshots
  h.startNodeWorker(nq.name, async () => held, { concurrency: 1, lockDuration: 600000, stalledInterval: 600000 });
  await h.waitFor(async () => (await job.getState()) === 'active', { what: 'job active in the Node worker' });
  await nq.queue.add('w', {});
  await nq.queue.add('d', {}, { delay: 600000 });
  const before = await snapshot(nq.name);

  const r = await h.ferry(['queue', 'obliterate', nq.name, '--yes']);
  assert.strictEqual(r.code, 1, r.stderr);
  assert.match(r.stderr, /1 active job/);
  assert.strictEqual(r.stdout, '');
  assert.deepStrictEqual(await snapshot(nq.name), before, 'the queue is as it was');
  assert.strictEqual(await nq.queue.isPaused(), false, 'and not paused');

  const out = await h.ferryOk(['queue', 'obliterate', nq.name, '--yes', '--force']);
  assert.strictEqual(countPrinted(out, nq.name), Object.keys(before).length);
  assert.deepStrictEqual(await queueKeys(nq.name), []);
  release();
});

suite.run();
