// queue_limits.test.js - queue-level throttles shared by both implementations: what
// `ferry queue concurrency | global-rate-limit | rate-limit` write is what Node's getters read and
// the other way round; a global concurrency set by ferry holds for Node workers and one set by
// Node holds for a ferry worker; and BullMQ's rule for the manual rate limit, observed on Node
// workers: `ferry queue rate-limit` stops a worker that has a limiter and does not stop one
// without. Timing checks are lower bounds only.
'use strict';
const assert = require('node:assert');
const { Job } = require('bullmq');
const h = require('./lib/harness');

const suite = new h.Suite('queue_limits: rate limits and global concurrency across ferry and Node');
const redis = h.newRedis();
suite.onCleanup(() => redis.quit());

const MANUAL = '9007199254740991'; // what queue.rateLimit() stores (Number.MAX_SAFE_INTEGER)

const key = (q, suffix) => `${h.PREFIX}:${q}:${suffix}`;

async function ferryJson(args) {
  return JSON.parse(await h.ferryOk(args));
}

// The fields both implementations write for these settings, read raw.
async function limitState(q) {
  const [concurrency, max, duration] = await redis.hmget(key(q, 'meta'), 'concurrency', 'max', 'duration');
  return { concurrency, max, duration, limiter: await redis.get(key(q, 'limiter')) };
}

suite.check('Node getters read what ferry wrote, and ferry writes the same keys as Node', async () => {
  const fq = await h.nodeQueue(suite, h.uniqueQueue('lim-f'));
  const nq = await h.nodeQueue(suite, h.uniqueQueue('lim-n'));
  assert.strictEqual(await fq.queue.getGlobalConcurrency(), null);
  assert.strictEqual(await fq.queue.getGlobalRateLimit(), null);

  await h.ferryOk(['queue', 'concurrency', fq.name, '3']);
  await h.ferryOk(['queue', 'global-rate-limit', fq.name, '--max', '4', '--duration', '2000']);
  await h.ferryOk(['queue', 'rate-limit', fq.name, '60000']);
  assert.strictEqual(await fq.queue.getGlobalConcurrency(), 3);
  assert.deepStrictEqual(await fq.queue.getGlobalRateLimit(), { max: 4, duration: 2000 });
  const nodeTtl = await fq.queue.getRateLimitTtl();
  assert.ok(nodeTtl > 50000 && nodeTtl <= 60000, `Node getRateLimitTtl ${nodeTtl}`);

  await nq.queue.setGlobalConcurrency(3);
  await nq.queue.setGlobalRateLimit(4, 2000);
  await nq.queue.rateLimit(60000);
  const fs = await limitState(fq.name);
  assert.deepStrictEqual(fs, await limitState(nq.name), 'same meta fields and limiter value');
  assert.deepStrictEqual(fs, { concurrency: '3', max: '4', duration: '2000', limiter: MANUAL });

  // removal by ferry
  await h.ferryOk(['queue', 'rate-limit', fq.name, '--clear']);
  assert.strictEqual(await fq.queue.getRateLimitTtl(), 0, 'meta.max set, not limited: 0');
  await h.ferryOk(['queue', 'global-rate-limit', fq.name, '--remove']);
  await h.ferryOk(['queue', 'concurrency', fq.name, '--remove']);
  assert.strictEqual(await fq.queue.getGlobalConcurrency(), null);
  assert.strictEqual(await fq.queue.getGlobalRateLimit(), null);
  assert.strictEqual(await fq.queue.getRateLimitTtl(), -2, 'no key, no meta.max: PTTL -2');
  assert.deepStrictEqual(await limitState(fq.name), { concurrency: null, max: null, duration: null, limiter: null });
});

suite.check('ferry reads what Node wrote (and agrees with Node getRateLimitTtl)', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('lim-rd'));
  assert.deepStrictEqual(await ferryJson(['queue', 'concurrency', nq.name, '--json']), { concurrency: null });
  assert.deepStrictEqual(await ferryJson(['queue', 'global-rate-limit', nq.name, '--json']), { max: null, duration: null });
  assert.deepStrictEqual(await ferryJson(['queue', 'rate-limit', nq.name, '--show', '--json']), { ttl: -2 });

  await nq.queue.setGlobalConcurrency(5);
  await nq.queue.setGlobalRateLimit(3, 1500);
  await nq.queue.rateLimit(60000);
  assert.deepStrictEqual(await ferryJson(['queue', 'concurrency', nq.name, '--json']), { concurrency: 5 });
  assert.deepStrictEqual(await ferryJson(['queue', 'global-rate-limit', nq.name, '--json']), { max: 3, duration: 1500 });
  const { ttl } = await ferryJson(['queue', 'rate-limit', nq.name, '--show', '--json']);
  const nodeTtl = await nq.queue.getRateLimitTtl();
  assert.ok(ttl > 50000 && ttl <= 60000, `ferry ttl ${ttl}`);
  assert.ok(nodeTtl <= ttl, `Node (read later) ${nodeTtl} <= ferry ${ttl}`);
  assert.match(await h.ferryOk(['queue', 'global-rate-limit', nq.name]), /global rate limit 3 jobs per 1500 ms/);

  // a window counted below meta.max: both say "not limited" (0), not the window's PTTL
  await redis.set(key(nq.name, 'limiter'), '1', 'PX', 60000);
  assert.strictEqual(await nq.queue.getRateLimitTtl(), 0);
  assert.deepStrictEqual(await ferryJson(['queue', 'rate-limit', nq.name, '--json']), { ttl: 0 });

  await nq.queue.removeGlobalConcurrency();
  await nq.queue.removeGlobalRateLimit();
  await nq.queue.removeRateLimitKey();
  assert.deepStrictEqual(await ferryJson(['queue', 'concurrency', nq.name, '--json']), { concurrency: null });
  assert.deepStrictEqual(await ferryJson(['queue', 'global-rate-limit', nq.name, '--json']), { max: null, duration: null });
  assert.deepStrictEqual(await ferryJson(['queue', 'rate-limit', nq.name, '--json']), { ttl: -2 });
});

suite.check('global concurrency 1 set by ferry: 2 Node workers x concurrency 3 never run 2 jobs at once', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('lim-gcn'));
  await h.ferryOk(['queue', 'concurrency', nq.name, '1']);
  let running = 0;
  let maxRunning = 0;
  const done = [];
  const proc = async (job) => {
    running++;
    maxRunning = Math.max(maxRunning, running);
    await h.tick(60); // room for a second job to overlap if the limit were ignored
    running--;
    done.push(job.id);
  };
  const w1 = h.startNodeWorker(nq.name, proc, { concurrency: 3, drainDelay: 1 });
  const w2 = h.startNodeWorker(nq.name, proc, { concurrency: 3, drainDelay: 1 });
  for (let i = 0; i < 8; i++) {
    if (i % 2) await nq.queue.add('j', { i });
    else await h.ferryAdd(nq.name, 'j', { i });
  }
  await h.waitFor(() => done.length === 8, { what: '8 jobs done' });
  assert.strictEqual(maxRunning, 1, `at most 1 running (saw ${maxRunning})`);
  await w1.close();
  await w2.close();

  // a worker like those overlaps jobs once ferry removes the setting (so the check above can fail)
  await h.ferryOk(['queue', 'concurrency', nq.name, '--remove']);
  let release;
  const gate = new Promise((r) => (release = r));
  let inGate = 0;
  h.startNodeWorker(nq.name, async () => {
    inGate++;
    await gate;
  }, { concurrency: 3, drainDelay: 1 });
  for (let i = 0; i < 3; i++) await nq.queue.add('g', {});
  try {
    await h.waitFor(() => inGate >= 2, { what: 'two jobs running at once without the limit' });
  } finally {
    release();
  }
});

suite.check('global concurrency 1 set by Node: a ferry worker with --concurrency 4 runs one job at a time', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('lim-gcf'));
  await nq.queue.setGlobalConcurrency(1);
  const w = h.startFerryWorker(nq.name, { concurrency: 4, behave: { slow: { sleepMs: 300 }, long: { sleepMs: 1000 } } });
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await nq.queue.add('slow', { i })).id);
  // Generous deadline: a ferry worker whose last fetch found the queue maxed does not fetch
  // again when its own job finishes (Node's moveToFinished does, fetchNext); it waits for
  // the marker up to its drain delay (5 s), so each job here may take that long to start.
  await h.waitFor(async () => (await nq.queue.getJobCounts('completed')).completed === 3, { what: '3 completed', timeout: 60000 });
  const runs = w.runs();
  const starts = runs.filter((r) => r.ev === 'start').sort((a, b) => a.t - b.t);
  const endOf = new Map(runs.filter((r) => r.ev === 'end').map((r) => [r.id, r.t]));
  assert.deepStrictEqual(starts.map((s) => s.id).sort(), [...ids].sort());
  for (let i = 1; i < starts.length; i++) {
    const prevEnd = endOf.get(starts[i - 1].id);
    assert.ok(starts[i].t >= prevEnd, `job ${starts[i].id} started at ${starts[i].t}, before job ${starts[i - 1].id} ended at ${prevEnd}`);
  }

  // without the setting the same worker runs several at once (so the check above can fail)
  await nq.queue.removeGlobalConcurrency();
  const more = [];
  for (let i = 0; i < 3; i++) more.push((await nq.queue.add('long', { i })).id);
  await h.waitFor(async () => (await nq.queue.getJobCounts('completed')).completed === 6, { what: '6 completed' });
  const all = w.runs();
  const endAt = new Map(all.filter((r) => r.ev === 'end').map((r) => [r.id, r.t]));
  const longStarts = all.filter((r) => r.ev === 'start' && more.includes(r.id));
  const overlapping = longStarts.filter((a) => longStarts.some((b) => b !== a && b.t <= a.t && a.t < endAt.get(b.id)));
  assert.ok(overlapping.length >= 1, `the 3 jobs ran one after another: ${JSON.stringify(all)}`);
});

// Node worker processor that records when each job started.
function recordingWorker(nq, opts) {
  const started = new Map();
  h.startNodeWorker(nq.name, async (job) => {
    started.set(job.id, Date.now());
  }, { drainDelay: 1, ...opts });
  return started;
}

suite.check('`ferry queue rate-limit` stops a Node worker that has a limiter', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('lim-rl'));
  const started = recordingWorker(nq, { limiter: { max: 1000, duration: 60000 } });
  const warm = await nq.queue.add('warm', {});
  await h.waitFor(() => started.has(warm.id), { what: 'warm-up job' });
  const t0 = Date.now();
  await h.ferryOk(['queue', 'rate-limit', nq.name, '2000']);
  const job = await nq.queue.add('after', {});
  const j = await h.nodeJobInState(nq, job.id, 'completed');
  assert.ok(j.processedOn - t0 >= 1900, `processed ${j.processedOn - t0} ms after a 2000 ms rate limit`);
});

suite.check('`ferry queue rate-limit` does NOT stop a Node worker without a limiter (BullMQ rule)', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('lim-nl'));
  const started = recordingWorker(nq, {});
  const warm = await nq.queue.add('warm', {});
  await h.waitFor(() => started.has(warm.id), { what: 'warm-up job' });
  await h.ferryOk(['queue', 'rate-limit', nq.name, '120000']);
  const job = await h.ferryAdd(nq.name, 'after', {});
  await h.nodeJobInState(nq, job, 'completed');
  // it ran while the limit was still in force (the key lives, untouched by the worker)
  assert.ok((await redis.pttl(key(nq.name, 'limiter'))) > 0, 'limiter key still alive');
  assert.strictEqual(await redis.get(key(nq.name, 'limiter')), MANUAL);
  const j = await Job.fromId(nq.queue, job);
  assert.strictEqual(j.attemptsStarted, 1, 'fetched once, not pushed back');
});

suite.run();
