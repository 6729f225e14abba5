// flows.test.js - BullMQ flows and keepLastIfActive deduplication across ferry and Node 6.7.0:
// a Node FlowProducer adds a parent (processed by a Node Worker) with children in another
// queue processed by a `ferry worker`; the children's completions must move the parent out of
// waiting-children so it runs and reads getChildrenValues(); a child failing for good with
// failParentOnFailure must fail the parent ("child <key> failed"); a completion refused for
// pending children fails the job with BullMQ's error; and a keepLastIfActive duplicate added
// while ferry runs the owner must be created when ferry finishes the owner.
'use strict';
const assert = require('node:assert');
const { FlowProducer, Job } = require('bullmq');
const h = require('./lib/harness');

const suite = new h.Suite('flows: Node FlowProducer / dedup -> ferry worker');
const flows = new FlowProducer({ connection: h.connection });
suite.onCleanup(() => flows.close());

suite.check('children run by ferry release the parent; the Node parent runs with getChildrenValues', async () => {
  const pq = await h.nodeQueue(suite, h.uniqueQueue('flow-parent'));
  const cq = await h.nodeQueue(suite, h.uniqueQueue('flow-kids'));
  const tree = await flows.add({
    name: 'parent',
    queueName: pq.name,
    data: { p: 1 },
    children: [
      { name: 'kid', queueName: cq.name, data: { k: 1 } },
      { name: 'kid', queueName: cq.name, data: { k: 2 } },
    ],
  });
  const parentId = tree.job.id;
  assert.strictEqual(await pq.queue.getJobState(parentId), 'waiting-children');
  let seen = null;
  h.startNodeWorker(pq.name, async (job) => {
    seen = await job.getChildrenValues();
    return { got: Object.keys(seen).length };
  });
  const w = h.startFerryWorker(cq.name, { name: 'ferry-flows' });
  const parent = await h.nodeJobInState(pq, parentId, 'completed');
  assert.deepStrictEqual(parent.returnvalue, { got: 2 });
  const want = {};
  for (const c of tree.children) {
    want[`${h.PREFIX}:${cq.name}:${c.job.id}`] = { id: c.job.id, name: 'kid', queue: cq.name, attempt: '1', data: c.job.data };
  }
  assert.deepStrictEqual(seen, want, 'getChildrenValues = what ferry stored per child');
  const ev = await pq.waitEvent('waiting', parentId);
  assert.strictEqual(ev.prev, 'waiting-children');
  assert.deepStrictEqual(await parent.getDependenciesCount(), { processed: 2, unprocessed: 0, failed: 0, ignored: 0 });
  assert.strictEqual(w.starts().length, 2);
  assert.deepStrictEqual(await w.stop(), { code: 0, signal: null });
});

suite.check('a child failing for good with failParentOnFailure fails the Node parent', async () => {
  const pq = await h.nodeQueue(suite, h.uniqueQueue('fpof-parent'));
  const cq = await h.nodeQueue(suite, h.uniqueQueue('fpof-kids'));
  const tree = await flows.add({
    name: 'parent',
    queueName: pq.name,
    data: {},
    children: [{ name: 'bad', queueName: cq.name, data: {}, opts: { failParentOnFailure: true, attempts: 3 } }],
  });
  let parentRan = false;
  h.startNodeWorker(pq.name, async () => {
    parentRan = true;
  });
  h.startFerryWorker(cq.name, { behave: { bad: { exit: 65, stderr: 'no good\n' } } });
  const childKey = `${h.PREFIX}:${cq.name}:${tree.children[0].job.id}`;
  const parent = await h.nodeJobInState(pq, tree.job.id, 'failed');
  assert.strictEqual(parent.failedReason, `child ${childKey} failed`);
  assert.strictEqual(parentRan, false, 'the parent processor never ran');
  const child = await h.nodeJobInState(cq, tree.children[0].job.id, 'failed');
  assert.strictEqual(child.failedReason, 'no good');
  assert.strictEqual(child.attemptsMade, 1, 'exit 65 = no retry');
  assert.deepStrictEqual(await parent.getFailedChildrenValues(), {});
  assert.deepStrictEqual(Object.keys(await parent.getIgnoredChildrenFailures()), []);
  const r = h.newRedis();
  const unsuccessful = await r.zrange(`${h.PREFIX}:${pq.name}:${tree.job.id}:unsuccessful`, 0, -1);
  r.disconnect();
  assert.deepStrictEqual(unsuccessful, [childKey]);
});

suite.check('a child failing with ignoreDependencyOnFailure lets the parent run; Node sees the ignored failure', async () => {
  const pq = await h.nodeQueue(suite, h.uniqueQueue('idof-parent'));
  const cq = await h.nodeQueue(suite, h.uniqueQueue('idof-kids'));
  const tree = await flows.add({
    name: 'parent',
    queueName: pq.name,
    data: {},
    children: [
      { name: 'bad', queueName: cq.name, data: {}, opts: { ignoreDependencyOnFailure: true } },
      { name: 'kid', queueName: cq.name, data: { ok: true } },
    ],
  });
  let failures = null;
  h.startNodeWorker(pq.name, async (job) => {
    failures = await job.getIgnoredChildrenFailures();
    return 'parent done';
  });
  h.startFerryWorker(cq.name, { behave: { bad: { exit: 65, stderr: 'ignored failure\n' } } });
  const parent = await h.nodeJobInState(pq, tree.job.id, 'completed');
  assert.strictEqual(parent.returnvalue, 'parent done');
  const bad = tree.children.find((c) => c.job.name === 'bad');
  assert.deepStrictEqual(failures, { [`${h.PREFIX}:${cq.name}:${bad.job.id}`]: 'ignored failure' });
});

// The state a flow's parent is left in once its children finished, with the queue names
// replaced so a Node run and a ferry run compare equal; times dropped.
async function parentSnapshot(r, pq, cq) {
  const base = `${h.PREFIX}:${pq}`;
  const hash = await r.hgetall(`${base}:P`);
  delete hash.timestamp;
  const events = (await r.xrange(`${base}:events`, '-', '+')).map(([, f]) => {
    const o = {};
    for (let i = 0; i < f.length; i += 2) o[f[i]] = f[i + 1];
    if (o.event === 'delayed') o.delay = 'T';
    return o;
  });
  const snap = {
    hash,
    dependencies: (await r.smembers(`${base}:P:dependencies`)).sort(),
    processed: await r.hgetall(`${base}:P:processed`),
    failed: await r.hgetall(`${base}:P:failed`),
    unsuccessful: await r.zrange(`${base}:P:unsuccessful`, 0, -1),
    waitingChildren: await r.zrange(`${base}:waiting-children`, 0, -1),
    wait: await r.lrange(`${base}:wait`, 0, -1),
    prioritized: await r.zrange(`${base}:prioritized`, 0, -1),
    delayed: await r.zrange(`${base}:delayed`, 0, -1),
    marker: await r.zrange(`${base}:marker`, 0, -1),
    events,
    childKeys: (await r.keys(`${h.PREFIX}:${cq}:k*`)).sort(),
  };
  return JSON.parse(JSON.stringify(snap).split(cq).join('<cq>').split(pq).join('<pq>'));
}

suite.check('every flow case leaves the parent exactly as when a Node Worker runs the children', async () => {
  const { UnrecoverableError } = require('bullmq');
  const cases = {
    'completed': { parent: {}, bad: null },
    'priority parent': { parent: { priority: 3 }, bad: null },
    'delayed parent': { parent: { delay: 60000 }, bad: null },
    'fpof': { parent: {}, bad: { failParentOnFailure: true } },
    'cpof': { parent: {}, bad: { continueParentOnFailure: true } },
    'idof': { parent: {}, bad: { ignoreDependencyOnFailure: true } },
    'rdof': { parent: {}, bad: { removeDependencyOnFailure: true } },
    'no flag, kept': { parent: {}, bad: {} },
    'no flag, removeOnFail': { parent: {}, bad: { removeOnFail: true } },
    'removeOnComplete': { parent: {}, bad: null, okOpts: { removeOnComplete: true } },
  };
  const r = h.newRedis();
  try {
    for (const [label, c] of Object.entries(cases)) {
      const snaps = {};
      for (const who of ['node', 'ferry']) {
        const pq = await h.nodeQueue(suite, h.uniqueQueue(`x-${who}-p`));
        const cq = await h.nodeQueue(suite, h.uniqueQueue(`x-${who}-c`));
        const children = [{ name: 'ok', queueName: cq.name, data: { n: 1 }, opts: { jobId: 'k1', ...(c.okOpts || {}) } }];
        if (c.bad) children.push({ name: 'bad', queueName: cq.name, data: {}, opts: { jobId: 'k2', ...c.bad } });
        else children.push({ name: 'ok', queueName: cq.name, data: { n: 2 }, opts: { jobId: 'k2', ...(c.okOpts || {}) } });
        await flows.add({ name: 'parent', queueName: pq.name, data: {}, opts: { jobId: 'P', ...c.parent }, children });
        let w;
        if (who === 'node') {
          w = h.startNodeWorker(cq.name, async (job) => {
            if (job.name === 'bad') throw new UnrecoverableError('bad');
            return { v: 1 };
          }, { concurrency: 1 });
        } else {
          w = h.startFerryWorker(cq.name, { concurrency: 1, behave: { ok: { stdout: '{"v":1}' }, bad: { exit: 65, stderr: 'bad\n' } } });
        }
        await h.waitFor(async () => {
          const n = await cq.queue.getJobCounts('completed', 'failed', 'wait', 'active');
          return n.wait === 0 && n.active === 0 && (await r.xlen(`${h.PREFIX}:${cq.name}:events`)) > 0 &&
            (await r.xrange(`${h.PREFIX}:${cq.name}:events`, '-', '+')).filter(([, f]) => f[1] === 'completed' || f[1] === 'failed').length === 2;
        }, { what: `${label}: both children finished by ${who}` });
        if (who === 'node') await w.close();
        else assert.deepStrictEqual(await w.stop(), { code: 0, signal: null });
        snaps[who] = await parentSnapshot(r, pq.name, cq.name);
      }
      assert.deepStrictEqual(snaps.ferry, snaps.node, `${label}: ferry leaves the parent as Node does`);
    }
  } finally {
    r.disconnect();
  }
});

suite.check('a ferry job completing with pending children fails with BullMQ\'s error and is retried', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('pending-kids'));
  const job = await nq.queue.add('lonely', {}, { attempts: 2 });
  const r = h.newRedis();
  await r.sadd(`${h.PREFIX}:${nq.name}:${job.id}:dependencies`, `${h.PREFIX}:${nq.name}:elsewhere`);
  r.disconnect();
  const w = h.startFerryWorker(nq.name);
  const j = await h.nodeJobInState(nq, job.id, 'failed');
  assert.strictEqual(j.failedReason, `Job ${job.id} has pending dependencies. moveToFinished`);
  assert.strictEqual(j.attemptsMade, 2);
  assert.strictEqual(w.starts(job.id).length, 2, 'retried as Node retries it');
  assert.strictEqual(await nq.queue.getActiveCount(), 0);
});

suite.check('keepLastIfActive: the last duplicate added while ferry runs the owner is created when it finishes', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('klia'));
  const de = { id: 'same', keepLastIfActive: true };
  const first = await nq.queue.add('slow', { v: 1 }, { deduplication: de });
  const w = h.startFerryWorker(nq.name, { behave: { slow: { sleepMs: 3000 } } });
  await h.waitFor(() => w.starts(first.id).length === 1, { what: 'the owner running in ferry' });
  await nq.queue.add('next', { v: 2 }, { jobId: 'dup-2', deduplication: de });
  await nq.queue.add('next', { v: 3 }, { jobId: 'dup-3', deduplication: de });
  await h.waitFor(() => nq.seen('deduplicated').length === 2, { what: 'two deduplicated events' });
  assert.deepStrictEqual(nq.seen('deduplicated').map((e) => e.deduplicatedJobId), ['dup-2', 'dup-3']);
  const last = await h.nodeJobInState(nq, 'dup-3', 'completed', 30000);
  assert.deepStrictEqual(last.data, { v: 3 });
  assert.deepStrictEqual(last.returnvalue.data, { v: 3 });
  assert.strictEqual(await Job.fromId(nq.queue, 'dup-2'), undefined, 'the overwritten duplicate never exists');
  assert.strictEqual(w.starts('dup-2').length, 0);
  const firstDone = await h.nodeJobInState(nq, first.id, 'completed');
  assert.ok(firstDone.finishedOn <= last.processedOn, 'created when the owner finished');
  await nq.waitEvent('added', 'dup-3');
  const r = h.newRedis();
  assert.strictEqual(await r.hget(`${h.PREFIX}:${nq.name}:dup-3`, 'deid'), 'same');
  assert.strictEqual(await r.exists(`${h.PREFIX}:${nq.name}:dn:same`), 0);
  assert.strictEqual(await r.exists(`${h.PREFIX}:${nq.name}:de:same`), 0, 'released by dup-3\'s own finish');
  r.disconnect();
});

suite.run();
